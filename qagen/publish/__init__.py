"""Publishing a run on the Hugging Face Hub, with a dataset card that says how it was made."""
