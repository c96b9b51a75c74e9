"""Put on PYTHONPATH by the framework tests: every Python process that starts with it lives three
years and a day later than the wall clock (time.time, datetime.now, time.monotonic... all move),
so a replay "on another day" is really on another day."""

import datetime

import time_machine

LATER = datetime.timedelta(days=3 * 365 + 1)
time_machine.travel(datetime.datetime.now(datetime.timezone.utc) + LATER, tick=True).start()
