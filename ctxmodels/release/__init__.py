"""Releasing models: measuring them (``quality.py``, behind ``ctxmodels quality``) and shipping them into
``assets/`` with measured model cards (``shipping.py``, behind ``ctxmodels ship``)."""
