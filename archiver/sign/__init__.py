"""Signing WACZ packages and checking their signatures ("WACZ Signing and Verification",
https://specs.webrecorder.net/wacz-auth/0.1.0/).

A signed package's ``datapackage-digest.json`` carries ``signedData``: a signature of the
``hash`` of ``datapackage.json``, and an identity. Two identities exist, and both are made and
checked here:

* **anonymous** (:mod:`archiver.sign.keys`): a local ECDSA key signs the hash and its public
  key travels with the signature. Whoever holds the key signed; which person that is must be
  learnt elsewhere (the key's fingerprint, published by its owner).
* **domain** (:mod:`archiver.sign.remote`): an authsign-compatible server signs with the key
  of a TLS certificate for its domain, and an RFC 3161 time stamp authority dates that
  signature (:mod:`archiver.sign.timestamp`). Both certificate chains must end at trusted
  roots (:mod:`archiver.sign.certs`).

:mod:`archiver.sign.signeddata` is the format (which fields, which formats),
:mod:`archiver.sign.check` the verification steps of the specification's section
"Verification". The package takes and returns plain data: ``cryptography`` and
``rfc3161-client`` objects never leave it, and it knows nothing of ZIP files (the index
package writes and reads packages and hands the digest here).
"""
