"""Double-blind preference studies: set-up, blinded candidates, side randomisation and assignment, answers, an LLM
judge asked in both orders on the LLM engine, analysis, pages, API, forms, demo and tasks."""
