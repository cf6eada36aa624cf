#!/bin/sh
# A notify or check script for the director tests: does nothing.
exit 0
