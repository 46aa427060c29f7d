"""Run once in the forkserver that parse workers start from, and only there:
it is the first module of :data:`pilar.ingest.parallel.PRELOAD`, which the
forkserver imports when it starts.

It asks Linux to SIGKILL the forkserver when the process that started it
dies (``PR_SET_PDEATHSIG``, :func:`pilar.ingest.parallel.die_with_parent`).
Without it a forkserver outlives a SIGKILLed caller for as long as any
worker lives (each worker holds the forkserver's "alive" pipe, so the
forkserver never reads the EOF that would end it), and a worker busy in a
long parse lives on; with it, the caller's death kills the forkserver and
that kills each worker (their own ``PR_SET_PDEATHSIG``): kernel signals
both, so a worker stuck inside C code holding the GIL dies as well.
"""

from pilar.ingest.parallel import die_with_parent

die_with_parent()
