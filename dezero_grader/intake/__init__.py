"""What is handed in, read safely: a submission (folder, zip, notebooks, git repository) turned into a
scratch copy, and the instructor's roster."""
