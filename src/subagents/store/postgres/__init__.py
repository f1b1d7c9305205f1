"""A store on PostgreSQL, for runs shared by several processes and machines.

:class:`PostgresStore` implements the :class:`~subagents.store.base.Store` protocol with the
records, step log and leases of the SQLite store (:mod:`subagents.store.steplog`); it is
chosen by a ``postgresql://`` URL (``open_store(url)``, ``--store``, ``SUBAGENTS_STORE``).
Needs ``pip install 'subagents[postgres]'`` (psycopg 3 and its pool).
"""

from __future__ import annotations

from subagents.store.postgres.store import PostgresStore, PostgresTransaction

__all__ = ["PostgresStore", "PostgresTransaction"]
