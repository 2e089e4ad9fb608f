
BmeanJÂ3Q3°3Ò1