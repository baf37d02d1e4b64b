"""Whether the block reached the model: what the hooks handed each session (`sent`), the
turns each host records with what it added to them (the hosts' readers), and the two set side
by side, per session (`turns`)."""
