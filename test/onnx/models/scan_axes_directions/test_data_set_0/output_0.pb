B
scan_stateJ“u+?„7Ô=