"""Data: what lidframe reads and writes, and nothing that computes a metric.

Score sets (:mod:`~lidframe.data.scoreset`), embedding sets (:mod:`~lidframe.data.embedset`),
Kaldi data directories (:mod:`~lidframe.data.kaldi`), the ``Utterance`` record
(:mod:`~lidframe.data.utterance`), simulated systems (:mod:`~lidframe.data.simulate`),
unit-row normalisation for cosine scoring (:mod:`~lidframe.data.vectors`),
checked reading of ``.npz`` / ``.npy`` files (:mod:`~lidframe.data.npzfile`),
atomic file output, output-path checks, JSON and file digests (:mod:`~lidframe.data.fileio`), the one
rule that keeps a run's outputs off its inputs and the check of an input folder
(:mod:`~lidframe.data.runpaths`), why an input path cannot be read, for files and folders alike
(:mod:`~lidframe.data.inputstat`), and the
``to_dict()`` / ``to_frame()`` of every table-like result record
(:mod:`~lidframe.data.records`).  The lowest wing:
it imports only :mod:`lidframe.errors`.
"""
