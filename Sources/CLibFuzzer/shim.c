// CLibFuzzer has no code of its own: its header declares libFuzzer's driver.
