(set-logic ALL)
; benchmark generated from python API
(set-info :status unknown)
(assert
 (let (($x9 (= (_ bv255 8) ((_ extract 30 23) ((_ extract 31 0) (_ bv0 32))))))
(let (($x20 (or (and $x9 (and (distinct (_ bv0 23) ((_ extract 22 0) ((_ extract 31 0) (_ bv0 32)))) true)) (and $x9 (= (_ bv0 23) ((_ extract 22 0) ((_ extract 31 0) (_ bv0 32))))) (bvule (bvand (_ bv0 32) (_ bv2147483647 32)) (_ bv2113929216 32)))))
(not $x20))))
(check-sat)
