"""What a kernel parent prepares for its kernels (``autograder/sandbox/warm_up.py``), on ipykernel's real output
stream and IOPub thread, in a Python of its own (the faster flush changes ipykernel's class for the whole process)."""

import json
import subprocess
import sys

STREAM = """
import json, time, zmq
from ipykernel.iostream import IOPubThread, OutStream
from jupyter_client.session import Session
from autograder.sandbox.warm_up import flush_only_what_was_written

context = zmq.Context()
publisher, listener = context.socket(zmq.PUB), context.socket(zmq.SUB)
port = publisher.bind_to_random_port("tcp://127.0.0.1")
listener.connect(f"tcp://127.0.0.1:{port}")
listener.subscribe(b"")
thread = IOPubThread(publisher)
thread.start()
time.sleep(0.3)  # the subscription reaches the publisher
flush_only_what_was_written()
flush_only_what_was_written()  # twice: the same flush, not one wrapped in another
session = Session()
stream = OutStream(session, thread, "stdout", watchfd=False)
handed = []
schedule = thread.schedule
thread.schedule = lambda f: (handed.append(f), schedule(f))[1]
stream.flush()
empty = len(handed)
stream.write("printed\\n")
stream.flush()  # ipykernel's own: the text is published before it returns
texts = []
while listener.poll(2000 if not texts else 100):
    message = session.deserialize(session.feed_identities(listener.recv_multipart())[1])
    texts.append(message["content"].get("text"))
print(json.dumps({"empty": empty, "after_a_write": len(handed) > empty, "published": texts}))
"""


def test_a_stream_flushes_only_what_was_written_and_that_before_it_returns():
    run = subprocess.run([sys.executable, "-c", STREAM], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    answer = json.loads(run.stdout.strip().splitlines()[-1])
    assert answer == {"empty": 0, "after_a_write": True, "published": ["printed\n"]}
