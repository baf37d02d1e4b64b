"""End-to-end harness: the agent hosts' real programs (hosts.py), a mock model server that
logs what they send (mock_model.py), and one headless turn of each host (turns.py)."""
