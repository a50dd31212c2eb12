// CThreadSanitizer has no code of its own: its header declares the TSan annotations.
