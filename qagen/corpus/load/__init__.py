"""Reading a corpus: files (text, HTML, PDF), tables and Hugging Face datasets, as `Document` records."""
