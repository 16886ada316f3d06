"""One kernel as the grader and the lessons handle it: loaded from its file (``modules``), timed on the cost model or
a Neuron device (``latency``, ``device``), its source read for feedback premises, its program fingerprinted."""
