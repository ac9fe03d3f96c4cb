"""The one engine for LLM work: endpoint gateway, shared concurrency and rate limits, call records (the request
cache), claims and leases, retries and backoff, cost and token accounting. Knows nothing about judges, preference
studies or generation: they register a handler."""
