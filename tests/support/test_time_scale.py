#!/usr/bin/env python3
"""test_time_scale.py: tests/support/time_scale.py, the factor of the Python tests' time limits:
FLASHLAB_TIME_SCALE when set (and refused when it is not a number in (0, 1000]), else the load
per CPU, never below 1.  Planted: values a careless parser would take."""
import unittest

from time_scale import from_load, parse, time_scale   # beside this file


class TimeScale(unittest.TestCase):
    def test_the_variable_sets_it(self):
        self.assertEqual(time_scale({"FLASHLAB_TIME_SCALE": "4"}), 4.0)
        self.assertEqual(time_scale({"FLASHLAB_TIME_SCALE": "2.5"}), 2.5)
        self.assertEqual(time_scale({"FLASHLAB_TIME_SCALE": "0.5"}), 0.5)

    def test_bad_values_are_refused(self):
        for v in ("fast", "0", "-2", "nan", "inf", "1e9", "2x", " "):
            with self.assertRaises(ValueError, msg=v) as e:
                parse(v)
            self.assertIn("FLASHLAB_TIME_SCALE", str(e.exception))

    def test_without_it_the_load_per_cpu_at_least_1(self):
        self.assertEqual(from_load(0.3, 2), 1.0)
        self.assertEqual(from_load(8.0, 2), 4.0)
        self.assertEqual(from_load(3.0, 0), 3.0)
        self.assertGreaterEqual(time_scale({}), 1.0)
        self.assertGreaterEqual(time_scale({"FLASHLAB_TIME_SCALE": ""}), 1.0)


if __name__ == "__main__":
    unittest.main()
