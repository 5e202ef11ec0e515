"""A local stand-in for the Hugging Face Hub HTTP API (`server.StandInHub`)."""
