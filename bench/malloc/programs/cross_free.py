"""Cross-thread frees in CPython: two builder threads make batches of
objects (dicts, lists, strings, bytes) and hand each batch through a queue
to a third thread that checks and drops it, so most objects are freed on a
thread other than the one that allocated them. Prints a checksum that does
not depend on the allocator. Usage: cross_free.py [batches per builder]"""
import queue
import sys
import threading

BATCHES = int(sys.argv[1]) if len(sys.argv) > 1 else 300
q = queue.Queue(maxsize=4)


def build(tag):
    for b in range(BATCHES):
        batch = [
            {"id": i, "name": f"{tag}-{b}-{i}", "vals": list(range(i % 17)), "blob": bytes(i % 300)}
            for i in range(2000)
        ]
        q.put(batch)
    q.put(None)


def drop(done, out):
    total = 0
    while done[0] < 2:
        batch = q.get()
        if batch is None:
            done[0] += 1
            continue
        total += sum(len(o["name"]) + len(o["vals"]) + len(o["blob"]) for o in batch)
        del batch
    out.append(total)


out, done = [], [0]
threads = [threading.Thread(target=build, args=(t,)) for t in "ab"]
threads.append(threading.Thread(target=drop, args=(done, out)))
for t in threads:
    t.start()
for t in threads:
    t.join()
print("checksum", out[0])
