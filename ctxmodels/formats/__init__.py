"""Checkpoint formats: Hugging Face BERT folders and cache (``huggingface``), AllenNLP / bilm-tf ELMo files and
our own ELMo folders (``allennlp``). Formats build models; they never import loading, training or analysis."""
