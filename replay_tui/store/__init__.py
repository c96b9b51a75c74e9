"""Where journals live: opening any journal argument (a file, a shard directory, a foreign trace
imported into a cache, an object-storage URL) and the caches replay-tui keeps of them.

Below ``replay`` and above the readers it calls (``importers``, ``journal``): every command and the
app open journals through here, and no part of it runs agent code.
"""
