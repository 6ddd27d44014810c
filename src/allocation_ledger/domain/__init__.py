"""The pure domain: values, rules, aggregates and errors. No I/O here."""
