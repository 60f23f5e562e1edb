"""Google ADK eval files: EvalSet JSON and the legacy list, scored by `test_config.json`."""
