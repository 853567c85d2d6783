"""Model providers behind one interface (:mod:`neta_nb.providers.base`).

Vendor modules (``anthropic``, ``openai``) are the only importers of their SDKs and are
imported lazily, so the core works without either SDK installed.
"""
