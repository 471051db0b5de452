"""Training the embedded neural debugger: tokenizer, model presets, packed data, the training loop.

torch, transformers and tokenizers are imported inside functions, so importing this package is cheap.
"""
