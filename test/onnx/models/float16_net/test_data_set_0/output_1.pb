
BmeanJ𤤋�5D4