"""The divergent scanner: the cue vocabulary and its matching (`signals`) and the scan of the
divergent layer with every deferred line and its reason (`scanner`)."""
