export A
python3 x.py
