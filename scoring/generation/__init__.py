"""Dialogue generation: case sets, a doctor model under test talking with a patient simulator on the LLM engine,
prompts, pages, forms and tasks; finished dialogues flow into a corpus."""
