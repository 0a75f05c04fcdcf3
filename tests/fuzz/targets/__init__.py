"""One module per fuzz target; each defines ``TARGET`` (:class:`tests.fuzz.harness.Target`)."""
