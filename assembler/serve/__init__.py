"""The status page: a local web app and the data of each of its pages."""
