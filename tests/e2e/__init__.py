"""End-to-end harness: the agent hosts' real programs (hosts.py), a mock model server that
logs what they send (mock_model.py), one headless turn of each host (turns.py), and a host set
up for a workspace as every test sets one up (host_setup.py)."""
