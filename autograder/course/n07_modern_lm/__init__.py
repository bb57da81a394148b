"""Notebook 07: from GPT-2 to today's small language models (BPE tokenizers, RMSNorm, RoPE,
SwiGLU, attention with a cache, TinyLlama, cached generation). See autograder/course/__init__.py
for the files' roles."""
