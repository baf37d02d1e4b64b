"""Configuration: the schema and its checks, and the user's and the workspace's TOML files layered
into one `Config`.
"""
