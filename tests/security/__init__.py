"""Security: secrets stay where they belong, agent text is escaped, suites cannot read the machine."""
