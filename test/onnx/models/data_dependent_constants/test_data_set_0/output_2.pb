B
by_inverseJ¨;¿œ¥X¾¨;¿5tç¾Þ|Å¾œ¥X¾¨;¿