"""The archiver command line and the commands beside crawl: verify, report, replay, serve-sample."""
