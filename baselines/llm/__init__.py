"""The chat backend: any OpenAI-compatible server as the model behind a seat."""
