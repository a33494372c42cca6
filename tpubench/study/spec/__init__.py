"""What a study is: its file read and checked, its setups, published figures, seeds' rows."""
