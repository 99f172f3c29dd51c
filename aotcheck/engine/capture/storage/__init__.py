"""aotcheck.engine.capture.storage: an argument's (or any tensor's) storage changed, one home.

``x.data = y`` and ``set_()``: what the recorder sees of them while the function runs, and
where each swapped argument's storage went after the call. Part of the capture stage: what
it may import is what capture may, and capture's own modules.
"""
