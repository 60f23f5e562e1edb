"""Google ADK's criteria and prebuilt metrics, scored as google-adk 2.13.0 scores them."""
