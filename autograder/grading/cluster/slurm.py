"""The Slurm batch job that runs one Dask worker for ``grade --scheduler`` (``backprop-ninja slurm-script``).

dask-jobqueue writes it; the settings that matter for grading (a slot and one torch thread per core, a unique name,
the course's own Python, TLS) are chosen here, once (docs/design/cluster.md).
"""

import sys

from ...common.errors import GradingError

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def job_script(
    scheduler: str,
    cores: int,
    memory: str,
    walltime: str,
    queue: str | None = None,
    account: str | None = None,
    tls: tuple | None = None,
    python: str = sys.executable,
) -> str:
    """The job script's text; ``tls`` is (CA file, worker certificate, worker key) or None."""
    try:
        from dask_jobqueue.slurm import SLURMJob
        from distributed.security import Security
    except ImportError:
        raise GradingError("writing a Slurm job needs dask-jobqueue: .venv/bin/pip install -e '.[cluster]'") from None
    security = None
    if tls:
        ca, cert, key = tls
        security = Security(tls_ca_file=ca, tls_worker_cert=cert, tls_worker_key=key, require_encryption=True)
    job = SLURMJob(
        scheduler=scheduler,
        name="backprop-ninja-$SLURM_JOB_ID",
        job_name="backprop-ninja-grading",
        cores=cores,
        processes=1,
        memory=memory,
        walltime=walltime,
        queue=queue,
        account=account,
        python=python,
        security=security,
        job_script_prologue=[f"export {variable}=1" for variable in THREAD_VARIABLES],
    )
    return job.job_script()
