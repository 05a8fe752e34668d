A=(
${A[@]}
)
python3 x.py ${A[@]}
