"""Looking inside loaded models: word vectors per layer (``vectors``), projections, sense measurements
(``senses``, ``word_senses``, ``metrics``), attention, fill-in, probes and benchmark evaluation.

Analysis works on :class:`ctxmodels.loading.LoadedModel` objects and plain arrays; it never imports training,
release or command-line code, and never Streamlit: the app and the CLI both call it.
"""
