"""MetaSchedule's logging, made safe to start in a process whose loggers carry other handlers.

Every ``tune_tir`` / ``tune_relax`` / ``tune_tasks`` call configures MetaSchedule's loggers with
``logging.config.dictConfig``, listing *every* handler already on the logger
``tvm.s_tir.meta_schedule`` by name as one to re-attach (``tvm/s_tir/meta_schedule/logging.py``,
``create_loggers``). A handler that MetaSchedule did not configure itself breaks that call: an
unnamed one with ``AttributeError: 'NoneType' object has no attribute 'format'``, a named one
with ``ValueError: Unable to add handler``. pytest 9.2 began attaching its unnamed capture
handlers to every non-propagating logger, MetaSchedule's included once a first tuning run has
created it, so the second tuning run of a test session failed; an application's own handler on
that logger does the same.
"""
from __future__ import annotations

import logging
from contextlib import contextmanager

METASCHEDULE_LOGGER = "tvm.s_tir.meta_schedule"


@contextmanager
def metaschedule_logging():
    """Detach the handlers MetaSchedule did not configure (whose name does not start with
    ``tvm.s_tir.meta_schedule``) from its logger for the duration, and put them back after.

    Wrap any direct call of MetaSchedule's tuning entry points in it; ``gbxfer.tvm``'s own
    tuning does.

    Examples
    --------
    >>> from gbxfer.tvm import metaschedule_logging
    >>> with metaschedule_logging():  # doctest: +SKIP
    ...     ms.relax_integration.tune_relax(mod, params, target, work_dir, 64)
    """
    logger = logging.getLogger(METASCHEDULE_LOGGER)
    foreign = [h for h in logger.handlers if not (h.get_name() or "").startswith(
        METASCHEDULE_LOGGER)]
    for handler in foreign:
        logger.removeHandler(handler)
    try:
        yield
    finally:
        for handler in foreign:
            logger.addHandler(handler)
