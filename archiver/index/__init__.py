"""Indexes of what the writer wrote: CDXJ (pywb), CDX-11 (OpenWayback) and WACZ packages."""
