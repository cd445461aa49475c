"""Running a trial: its process, its workspace and directories, its environment."""
