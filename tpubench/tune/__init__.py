"""`tpubench tune`: search the settings that change speed but not the model (space, trials,
search, results); each trial is a real `tpubench train` process."""
