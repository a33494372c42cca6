"""Reading a study: its findings judged from the records, the report's tables and charts."""
