"""Batch runs: an agent over many inputs (``agent.map(df, prompt=…)``), one session per
row, behind one rate limiter, with durable, exactly-once results in a session store."""

from .limiter import RateLimiter, parse_rate
from .run import BatchRun

__all__ = ["BatchRun", "RateLimiter", "parse_rate"]
