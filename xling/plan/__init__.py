"""The experiment plan the rules call into: what code each job runs, as a version by content.

Standard library and yaml only, never torch, pandas or matplotlib: parsing the workflow imports it.
"""
