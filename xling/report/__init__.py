"""The HTML report: core (registry, formatting, published numbers), one module per study, figures."""
