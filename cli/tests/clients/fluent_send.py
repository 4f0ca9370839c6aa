"""Sends numbered events to a glyd sink with the fluent-logger package (Message mode).

Usage: python3 fluent_send.py PORT COUNT
"""
import sys

from fluent import sender


def main():
    port, count = int(sys.argv[1]), int(sys.argv[2])
    logger = sender.FluentSender("py", host="127.0.0.1", port=port, timeout=10.0)
    for i in range(count):
        if not logger.emit("app", {"n": i, "level": "WARN" if i % 2 else "INFO", "msg": f"python event {i}"}):
            print(f"fluent_send.py: event {i}: {logger.last_error}", file=sys.stderr)
            sys.exit(1)
    logger.close()
    print(f"sent {count}")


if __name__ == "__main__":
    main()
